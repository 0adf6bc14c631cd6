-- Scenario: length of the synthesis a checkpoint presents (the seed's context.synthesis_length_words) vs how often the
-- user validated it (outcome.user_validated, else the reply's validated_output). Checkpoints without a recorded
-- synthesis length are left out (the length of the moderator's message is not the synthesis).
WITH checkpoints AS (
    SELECT turn_id, CAST(attributes->>'$.synthesis_length_words' AS INTEGER) AS words
    FROM turns
    WHERE episode_id LIKE 'scenario:%' AND role = 'assistant'
      AND attributes->>'$.synthesis_length_words' IS NOT NULL
),
validation AS (
    SELECT turn_id,
           coalesce(avg(value_num) FILTER (WHERE name = 'user_validated'),
                    avg(value_num) FILTER (WHERE name = 'validated_output')) AS validated
    FROM feedback
    WHERE name IN ('user_validated', 'validated_output') AND turn_id IS NOT NULL
    GROUP BY turn_id
)
SELECT CASE WHEN words < 200 THEN 'a: <200 words'
            WHEN words < 400 THEN 'b: 200-399 words'
            WHEN words < 800 THEN 'c: 400-799 words'
            ELSE 'd: 800+ words' END AS length_bucket,
       count(*) AS checkpoints,
       round(avg(words), 1) AS mean_words,
       count(validated) AS judged,
       round(avg(validated), 3) AS validation_rate
FROM checkpoints
LEFT JOIN validation USING (turn_id)
GROUP BY ALL
ORDER BY length_bucket
