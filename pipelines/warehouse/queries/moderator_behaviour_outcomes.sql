-- Scenario (RL use case: which moderator behaviour leads to validation vs correction?): for each behaviour of a
-- moderator message (message type, tone, synthesis provided, questions asked, the seed's question_quality label,
-- the action it proposed), how often the user validated it and how often the user corrected it.
WITH moderator AS (
    SELECT m.turn_id,
           m.attributes->>'$.message_type' AS message_type,
           m.attributes->>'$.fields.prompt_structure.tone' AS tone,
           m.attributes->>'$.fields.prompt_structure.synthesis_provided' AS synthesis_provided,
           m.attributes->>'$.fields.prompt_structure.questions_asked' AS questions_asked
    FROM turns m
    WHERE m.episode_id LIKE 'scenario:%' AND m.role = 'assistant'
),
labels AS (
    SELECT turn_id, any_value(value_text) AS question_quality
    FROM feedback WHERE name = 'question_quality' AND episode_id LIKE 'scenario:%' GROUP BY turn_id
),
proposals AS (
    SELECT attributes->>'$.moderator_turn_id' AS turn_id, any_value(suggested_action) AS proposed_action
    FROM decisions WHERE episode_id LIKE 'scenario:%' AND suggested_action IS NOT NULL GROUP BY ALL
),
validation AS (
    SELECT turn_id,
           coalesce(avg(value_num) FILTER (WHERE name = 'user_validated'),
                    avg(value_num) FILTER (WHERE name = 'validated_output')) AS validated
    FROM feedback
    WHERE name IN ('user_validated', 'validated_output') AND turn_id IS NOT NULL
    GROUP BY turn_id
),
corrected AS (
    SELECT DISTINCT attributes->>'$.corrects_turn_id' AS turn_id
    FROM turns WHERE episode_id LIKE 'scenario:%' AND attributes->>'$.corrects_turn_id' IS NOT NULL
),
judged AS (
    SELECT m.*, l.question_quality, p.proposed_action, v.validated, c.turn_id IS NOT NULL AS was_corrected
    FROM moderator m
    LEFT JOIN labels l USING (turn_id)
    LEFT JOIN proposals p USING (turn_id)
    LEFT JOIN validation v USING (turn_id)
    LEFT JOIN corrected c USING (turn_id)
),
behaviours AS (
    SELECT 'message_type' AS behaviour, message_type AS value, validated, was_corrected FROM judged
    UNION ALL SELECT 'tone', tone, validated, was_corrected FROM judged
    UNION ALL SELECT 'synthesis_provided', synthesis_provided, validated, was_corrected FROM judged
    UNION ALL SELECT 'questions_asked', questions_asked, validated, was_corrected FROM judged
    UNION ALL SELECT 'question_quality', question_quality, validated, was_corrected FROM judged
    UNION ALL SELECT 'proposed_action', proposed_action, validated, was_corrected FROM judged
)
SELECT behaviour, value,
       count(*) AS moderator_messages,
       count(validated) AS judged,
       round(avg(validated), 3) AS validation_rate,
       round(avg(CASE WHEN was_corrected THEN 1.0 ELSE 0.0 END), 3) AS correction_rate
FROM behaviours
WHERE value IS NOT NULL
GROUP BY ALL
ORDER BY behaviour, value
