"""The shared services, each a folder with its README and a `harness` verb: the infini-gram corpus
(`index`), the evidence store (`evidence`), the LLM judge (`judge`), model loading, and NLI (`nli`).

With core/ they are the foundation (tests/core/test_import_graph.py; docs/CONTRACTS.md, "Packages").
"""
