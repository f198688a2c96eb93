"""ragqual: measure the quality of a RAG pipeline and keep every measurement as history."""

__version__ = "0.1.0"
