-- Study: persuasion strategies (IQL policies) compared by the judge-stance step reward they earned.
SELECT r.selected_policy AS strategy,
       count(*) AS steps,
       round(avg(r.reward), 3) AS mean_step_reward,
       round(avg(CASE WHEN r.reward > 0 THEN 1.0 ELSE 0.0 END), 3) AS share_moved_toward_agree,
       round(avg(CASE WHEN r.reward < 0 THEN 1.0 ELSE 0.0 END), 3) AS share_moved_toward_refuse,
       round(avg(r.q_margin), 4) AS mean_q_margin
FROM turn_rewards r
WHERE r.reward_rule LIKE 'study_stance_step@%'
GROUP BY ALL
ORDER BY mean_step_reward DESC, strategy
