"""Runs of the whole sandbox that check what they did: the demo and the chaos run.

``python -m sandbox.scenarios.demo`` (:mod:`sandbox.scenarios.demo`) and
``python -m sandbox.scenarios.chaos`` (:mod:`sandbox.scenarios.chaos`).
"""
