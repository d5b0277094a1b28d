"""Providers: one small streaming protocol over each way of reaching a model.

Providers know nothing of debates: a model, a system text and messages go in; text deltas
and token usage come out; every failure is one ``ProviderError``.
"""
