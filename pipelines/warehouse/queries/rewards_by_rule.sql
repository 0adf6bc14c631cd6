-- Gold: rewards per rule and target (rows, signals, range) — a first look at what a model would train on.
SELECT reward_rule, target, count(*) AS rows, sum(n_signals) AS signals,
       round(min(reward), 3) AS min_reward, round(avg(reward), 3) AS mean_reward, round(max(reward), 3) AS max_reward
FROM turn_rewards
GROUP BY ALL
ORDER BY reward_rule, target
