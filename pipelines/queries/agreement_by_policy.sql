-- Study: agreement rate by selected IQL policy (every step of a session counts toward the policy it selected).
SELECT d.action AS selected_policy,
       count(DISTINCT e.episode_id) AS sessions,
       count(*) AS steps,
       round(avg(CASE WHEN e.end_reason = 'agreement' THEN 1.0 ELSE 0.0 END), 3) AS agreement_rate_of_steps,
       round(avg(o.terminal_reward), 3) AS mean_terminal_reward
FROM decisions d
JOIN episodes e USING (episode_id)
LEFT JOIN episode_outcomes o USING (episode_id)
WHERE e.source = 'study' AND d.action IS NOT NULL
GROUP BY ALL
ORDER BY agreement_rate_of_steps DESC, selected_policy
