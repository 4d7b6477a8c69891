"""The benchmark suite: ``python -m bench.run`` (``make bench``) starts the server, a fake
LLM and a load generator on loopback, runs the scenarios of docs/performance.md and prints
one table (also written as JSON under bench/results/). It measures; it never asserts timings.
"""
