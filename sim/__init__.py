"""llumsim: a discrete-event simulator of Llumnix-style multi-instance LLM serving on Vidur."""

from sim import native

__version__ = "0.1.0"

native.guard()  # before anything imports a module the compiled engine may shadow
