"""Budget-aware model selection."""

from ._search import DPGridSearchCV, planned_events_of, search_privacy_cost

__all__ = ["DPGridSearchCV", "search_privacy_cost", "planned_events_of"]
