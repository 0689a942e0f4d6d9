"""Importers: reader → parser → validator per format (``parsers``), one writer per kind (``writers``)."""
