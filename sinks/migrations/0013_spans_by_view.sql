-- 0013_spans_by_view: one view's state at T is one index lookup on its spans. `show` ranked the
-- view's ~100 files twice (the file in force at T, then its newest for a drop) and read its
-- activations apart: at 10^6 versions, ~6 of its ~15 ms. The spans already say all three, with
-- the copy of the current version that counts.
CREATE INDEX view_spans_by_view ON view_spans (view_id);
