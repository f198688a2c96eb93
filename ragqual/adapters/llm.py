"""The chat-model interface every backend implements (mock, Ollama, llama.cpp, OpenAI-compatible).

The types live in `ragqual.vocab` so every layer may name them; they are re-exported here for the
backends and existing imports.
"""

from ragqual.vocab import ChatMessage, ChatModel, ChatRequest, ChatResponse

__all__ = ["ChatMessage", "ChatModel", "ChatRequest", "ChatResponse"]
