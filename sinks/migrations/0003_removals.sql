-- 0003_removals: removals are history. A delete event (object store notification or filesystem)
-- records when a file went away; a view whose newest file is removed is dropped from then on.

-- source: one row per removal learned, from each channel that reported it.
CREATE TABLE removals (
    location VARCHAR NOT NULL,          -- normalised location of the removed file
    removed_ms BIGINT NOT NULL,         -- when it was removed (the event's own time), epoch ms
    source VARCHAR NOT NULL,            -- who said so: aws, sns, eventbridge, minio, seaweedfs, watch
    PRIMARY KEY (location, removed_ms, source)
);
CREATE INDEX removals_by_location ON removals (location);
