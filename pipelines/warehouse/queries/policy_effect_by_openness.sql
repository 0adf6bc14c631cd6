-- Study: do participants with higher openness respond better to certain IQL policies? Openness from the pre-survey
-- personality items q9 "I am willing to consider different strategies" and q10 "I resist adapting my plan" (reversed),
-- both 1-5: (q9 + 6 - q10) / 2, banded low < 3 <= medium < 4 <= high. Per band and selected policy, over the steps
-- before each session ended (credit per DESIGN §3): steps, mean stance-step reward, agreements / refusals credited.
WITH openness AS (
    SELECT participant_id,
           (max(answer_num) FILTER (WHERE question = 'q9') + 6 - max(answer_num) FILTER (WHERE question = 'q10')) / 2.0
               AS openness
    FROM survey_answers
    WHERE section = 'personality'
    GROUP BY ALL
),
steps AS (
    SELECT d.decision_id, d.action AS selected_policy, e.group_id AS participant_id
    FROM decisions d
    JOIN episodes e USING (episode_id)
    WHERE e.source = 'study' AND d.action IS NOT NULL
      AND coalesce(CAST(d.attributes->>'$.after_end' AS BOOLEAN), false) = false
),
stance AS (
    SELECT decision_id, reward FROM turn_rewards WHERE reward_rule LIKE 'study_stance_step@%'
),
ending AS (
    SELECT decision_id, reward FROM turn_rewards WHERE reward_rule LIKE 'study_terminal@%' AND decision_id IS NOT NULL
)
SELECT CASE WHEN o.openness IS NULL THEN '(no answer)'
            WHEN o.openness < 3 THEN 'a: low (< 3)'
            WHEN o.openness < 4 THEN 'b: medium (3 - 3.5)'
            ELSE 'c: high (>= 4)' END AS openness,
       s.selected_policy,
       count(DISTINCT s.participant_id) AS participants,
       count(*) AS steps,
       count(st.reward) AS rewarded_steps,
       round(avg(st.reward), 3) AS mean_step_reward,
       count(*) FILTER (WHERE en.reward > 0) AS agreements_credited,
       count(*) FILTER (WHERE en.reward < 0) AS refusals_credited
FROM steps s
LEFT JOIN openness o USING (participant_id)
LEFT JOIN stance st USING (decision_id)
LEFT JOIN ending en USING (decision_id)
GROUP BY ALL
ORDER BY openness, mean_step_reward DESC NULLS LAST, s.selected_policy
