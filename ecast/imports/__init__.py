"""Importers: a file is sniffed (``sniff``), then parsed and written by its format (``formats/<kind>.py``), found
through the ``registry`` of kinds; ``services`` runs an import as a job."""
