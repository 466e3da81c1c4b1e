"""Discrete-event kernel (simpy): clock, processes, wiring; no policy."""
