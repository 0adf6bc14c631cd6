-- Study: how the selected policy's Q-value, the best alternative and the margin evolve over steps.
SELECT CAST(r.rule_inputs->>'$.step' AS INTEGER) AS step,
       count(*) AS steps,
       round(avg(r.q_selected), 4) AS mean_q_selected,
       round(avg(r.q_best_alternative), 4) AS mean_q_best_alternative,
       round(avg(r.q_margin), 4) AS mean_q_margin,
       round(avg(CASE WHEN r.q_margin < 0 THEN 1.0 ELSE 0.0 END), 3) AS share_not_argmax
FROM turn_rewards r
WHERE r.reward_rule LIKE 'study_stance_step@%'
GROUP BY ALL
ORDER BY step
