-- Scenario (RL use case: when is a checkpoint worth the user's time?): per phase and checkpoint_timing label, the
-- share of checkpoint replies (in the checkpoint's own entry) that gave the moderator something — a correction or new strategic context, by the
-- source's own signals — against the seconds the user spent deciding (user_decision.decision_time_seconds).
WITH replies AS (
    SELECT u.attributes->>'$.answers_turn_id' AS checkpoint_turn_id,
           u.attributes->>'$.phase' AS phase,
           coalesce(u.attributes->>'$.source_correction' = 'true', false)
               OR coalesce(u.attributes->>'$.new_strategic_context' = 'true', false) AS contributed,
           CASE WHEN u.attributes->>'$.response_seconds_basis' = 'decision_time_seconds'
                THEN CAST(u.attributes->>'$.response_seconds' AS DOUBLE) END AS decision_seconds
    FROM turns u
    -- a reply to the checkpoint message of its own entry (same file and locator), not a hook-logged prompt
    JOIN turns m ON m.turn_id = u.attributes->>'$.answers_turn_id'
                AND m.attributes->>'$.locator' = u.attributes->>'$.locator'
                AND m.attributes->>'$.file' = u.attributes->>'$.file'
    WHERE u.episode_id LIKE 'scenario:%' AND u.role = 'user'
      AND (u.attributes->>'$.source_correction' IS NOT NULL OR u.attributes->>'$.new_strategic_context' IS NOT NULL)
),
timing AS (
    SELECT turn_id AS checkpoint_turn_id, any_value(value_text) AS checkpoint_timing
    FROM feedback
    WHERE name = 'checkpoint_timing' AND episode_id LIKE 'scenario:%'
    GROUP BY turn_id
)
SELECT coalesce(r.phase, '(none)') AS phase,
       coalesce(t.checkpoint_timing, '(not labelled)') AS checkpoint_timing,
       count(*) AS checkpoint_replies,
       count(*) FILTER (WHERE r.contributed) AS contributed,
       round(avg(CASE WHEN r.contributed THEN 1.0 ELSE 0.0 END), 3) AS contribution_rate,
       round(avg(r.decision_seconds), 1) AS mean_decision_seconds,
       round(sum(r.decision_seconds) / nullif(count(*) FILTER (WHERE r.contributed AND r.decision_seconds IS NOT NULL), 0), 1)
           AS decision_seconds_per_contribution
FROM replies r
LEFT JOIN timing t USING (checkpoint_turn_id)
GROUP BY ALL
ORDER BY phase, checkpoint_timing
