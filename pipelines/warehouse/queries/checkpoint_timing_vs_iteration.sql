-- Scenario: the seed's checkpoint_timing label of each checkpoint (well_timed, too_early, too_late, ...) vs how often
-- the checkpoint triggered an iteration (outcome.iteration_triggered) and was validated. Reads silver (the chosen copy
-- of each scenario), never the stale duplicate copies bronze keeps; checkpoints without a label are one row.
WITH signals AS (
    SELECT turn_id,
           any_value(value_text) FILTER (WHERE name = 'checkpoint_timing') AS label,
           avg(value_num) FILTER (WHERE name = 'iteration_triggered') AS iteration,
           avg(value_num) FILTER (WHERE name = 'user_validated') AS validated
    FROM feedback
    WHERE episode_id LIKE 'scenario:%' AND target = 'turn'
      AND name IN ('checkpoint_timing', 'iteration_triggered', 'user_validated')
    GROUP BY turn_id
)
SELECT coalesce(label, '(not labelled)') AS checkpoint_timing,
       count(*) AS checkpoints,
       count(iteration) AS with_iteration_signal,
       round(avg(iteration), 3) AS iteration_rate,
       round(avg(validated), 3) AS validation_rate
FROM signals
WHERE label IS NOT NULL OR iteration IS NOT NULL
GROUP BY coalesce(label, '(not labelled)')
ORDER BY checkpoint_timing = '(not labelled)', checkpoint_timing
