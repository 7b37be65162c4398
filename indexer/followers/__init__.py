"""The followers, processes that never stop: `watch` (a directory, through inotify) and `consume`
(object-store notifications through Kafka), and the spool writer through which several consumers
share one store.

May import everything below them: `pipeline`, `sources`, the pure rooms and the sinks.
"""
