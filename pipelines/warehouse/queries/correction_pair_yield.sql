-- Scenario (RL use case: preference pairs from corrections): every correction the source labels
-- (signals.provided_correction, user_correction), grouped by what it yields for DPO: a pair (the moderator's revised
-- answer to the same checkpoint, rewarded at least as high), a dropped pair (revision rewarded lower), no revised
-- answer, or nothing to correct. Counts before the release's own filters (empty prompt, identical texts, splits).
WITH corrections AS (
    SELECT episode_id, turn_id, turn_index, attributes->>'$.corrects_turn_id' AS corrected_turn_id
    FROM turns
    WHERE episode_id LIKE 'scenario:%' AND role = 'user' AND attributes->>'$.source_correction' = 'true'
),
revisions AS (
    SELECT turn_id AS revised_turn_id, turn_index AS revised_index, attributes->>'$.revises_turn_id' AS corrected_turn_id
    FROM turns
    WHERE episode_id LIKE 'scenario:%' AND attributes->>'$.revises_turn_id' IS NOT NULL
),
rewards AS (
    SELECT turn_id, reward FROM turn_rewards WHERE reward_rule LIKE 'scenario_outcome@%'
),
outcomes AS (
    SELECT c.turn_id, c.corrected_turn_id, r.revised_turn_id, rc.reward AS reward_corrected, rr.reward AS reward_revised,
           CASE WHEN c.corrected_turn_id IS NULL THEN 'd: nothing to correct (no earlier moderator turn)'
                WHEN r.revised_turn_id IS NULL THEN 'c: no revised answer'
                WHEN rr.reward < rc.reward THEN 'b: revision rewarded lower (dropped)'
                ELSE 'a: pair' END AS yield
    FROM corrections c
    LEFT JOIN revisions r ON r.corrected_turn_id = c.corrected_turn_id AND r.revised_index > c.turn_index
    LEFT JOIN rewards rc ON rc.turn_id = c.corrected_turn_id
    LEFT JOIN rewards rr ON rr.turn_id = r.revised_turn_id
)
SELECT yield,
       count(*) AS corrections,
       count(DISTINCT corrected_turn_id) AS corrected_answers,
       round(avg(reward_corrected), 3) AS mean_reward_corrected,
       round(avg(reward_revised), 3) AS mean_reward_revised
FROM outcomes
GROUP BY ALL
ORDER BY yield
