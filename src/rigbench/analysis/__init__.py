"""Analysis of stored results: statistics now; comparison and recommendation later."""
