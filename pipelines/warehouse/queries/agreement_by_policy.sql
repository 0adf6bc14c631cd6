-- Study: which IQL policy works for which character, and whether the policy's own Q-values agree. Per role-play character and
-- selected policy, over the steps before each session ended (credit per DESIGN §3: the stance judged at step k, and the end
-- it triggers, count for the policy of step k-1, never for a reply written after the ending): steps, mean stance-step
-- reward, share of rewarded steps that moved the resident toward AGREE / toward REFUSE, agreements and refusals credited to
-- the policy's step, and the mean Q-value and Q-margin (selected minus best alternative) of the policy when it was chosen.
WITH steps AS (
    SELECT d.decision_id,
           d.episode_id,
           d.action AS selected_policy,
           coalesce(e.attributes->>'$.character', '(none)') AS character,
           struct_extract(list_filter(d.candidates, lambda c: c.action = d.action)[1], 'value') AS q_selected,
           list_max(list_transform(list_filter(d.candidates, lambda c: c.action <> d.action), lambda c: c.value)) AS q_best_alternative
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
SELECT s.character,
       s.selected_policy,
       count(DISTINCT s.episode_id) AS sessions,
       count(*) AS steps,
       count(st.reward) AS rewarded_steps,
       round(avg(st.reward), 3) AS mean_step_reward,
       round(avg(CASE WHEN st.reward > 0 THEN 1.0 WHEN st.reward IS NOT NULL THEN 0.0 END), 3) AS share_toward_agree,
       round(avg(CASE WHEN st.reward < 0 THEN 1.0 WHEN st.reward IS NOT NULL THEN 0.0 END), 3) AS share_toward_refuse,
       count(*) FILTER (WHERE en.reward > 0) AS agreements_credited,
       count(*) FILTER (WHERE en.reward < 0) AS refusals_credited,
       round(avg(s.q_selected), 4) AS mean_q_selected,
       round(avg(s.q_selected - s.q_best_alternative), 4) AS mean_q_margin
FROM steps s
LEFT JOIN stance st USING (decision_id)
LEFT JOIN ending en USING (decision_id)
GROUP BY ALL
ORDER BY s.character, mean_step_reward DESC NULLS LAST, s.selected_policy
