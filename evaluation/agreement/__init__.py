"""Inter-assessor agreement between two assessments of the same items (Voorhees 2000): κ, confusion, τ of rankings."""
