"""Periodic interactions: neuro-san's manifest ``periodic`` key.

A manifest entry ``{"serve": true, "periodic": …}`` makes the server chat with that
network on a cron schedule, with a fixed text, sly_data and metadata, and throw the
answers away (the network's coded tools do the work). ``config`` validates the entry at
load, ``cron`` computes fire times, ``scheduler`` runs them inside the server.
"""
