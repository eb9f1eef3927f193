"""Figures and report sections per topic, and the report that assembles them."""
