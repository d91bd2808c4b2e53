// SKELETON: replaced by the strategy analysis.
