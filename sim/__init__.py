"""llumsim: a discrete-event simulator of Llumnix-style multi-instance LLM serving on Vidur."""

from sim.native import guard

__version__ = "0.1.0"

guard()  # before anything imports a module the compiled engine may shadow
