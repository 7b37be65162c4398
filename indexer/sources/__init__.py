"""Where bytes and events come from: the one seam that lists and reads metadata files (local
paths, S3 and other fsspec filesystems) and the decoding of object-store notifications.

May import the pure rooms (`parse.locations`, for one spelling per location) and `errors`;
nothing of the pipeline, the followers or the sinks.
"""
