"""In-tree reward methods: one folder each (`methods/<name>/`), exposing `METHOD`."""
