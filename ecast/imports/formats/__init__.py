"""One module per import format: its parse (text in, records and every bad row out) and its write (records into the
database, atomically). ``ecast.imports.registry`` lists the kinds and the writer of each; ``qrels`` and ``runs`` hold
the parse of kinds whose rows live in evaluation, which registers their writers."""
