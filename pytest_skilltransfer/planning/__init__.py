"""Planning and costs: upper bounds before a run and the dollars of one answer."""
