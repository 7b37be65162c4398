"""Event sources: where file reads come from (a directory watch; Kafka in a later module)."""
