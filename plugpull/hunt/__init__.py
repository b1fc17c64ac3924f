"""Hunting: many generated workloads recorded in one guest, crashed at each persistence point,
judged by the model oracle, with a journal that a stopped hunt goes on from."""
