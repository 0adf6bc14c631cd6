-- Scenario: checkpoint timing (minutes between moderator checkpoints) vs iteration rate (share of entries that triggered an iteration).
WITH checkpoints AS (
    SELECT t.episode_id, t.ts,
           t.ts - lag(t.ts) OVER (PARTITION BY t.episode_id ORDER BY t.turn_index) AS gap
    FROM turns t
    WHERE t.episode_id LIKE 'scenario:%' AND t.role = 'assistant'
      AND t.attributes->>'$.interaction_type' = 'checkpoint'
),
timing AS (
    SELECT episode_id, count(*) AS checkpoints,
           round(avg(epoch(gap)) / 60.0, 1) AS mean_minutes_between_checkpoints
    FROM checkpoints GROUP BY ALL
),
iterations AS (
    SELECT 'scenario:' || scenario_id AS episode_id,
           round(avg(CASE WHEN iteration_triggered THEN 1.0 ELSE 0.0 END), 3) AS iteration_rate
    FROM bronze.scenario_entries
    WHERE iteration_triggered IS NOT NULL
    GROUP BY ALL
)
SELECT e.native_id AS scenario, e.end_reason, t.checkpoints, t.mean_minutes_between_checkpoints,
       i.iteration_rate,
       CAST(o.outcome->>'$.total_checkpoints' AS INTEGER) AS reported_checkpoints
FROM timing t
JOIN episodes e USING (episode_id)
LEFT JOIN iterations i USING (episode_id)
LEFT JOIN episode_outcomes o USING (episode_id)
ORDER BY t.mean_minutes_between_checkpoints NULLS LAST, scenario
