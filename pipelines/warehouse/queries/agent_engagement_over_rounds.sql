-- Social RL: agent engagement over rounds (mean level, computed and source-reported round-over-round deltas, reward).
SELECT d.round_number,
       count(*) AS agent_rounds,
       round(avg(d.engagement), 3) AS mean_engagement,
       round(avg(d.engagement_delta), 3) AS mean_engagement_delta,
       round(avg(d.reported_engagement_delta), 3) AS mean_reported_engagement_delta,
       round(avg(r.reward), 3) AS mean_agent_reward
FROM agent_round_deltas d
LEFT JOIN turn_rewards r
       ON r.target = 'agent_round' AND r.episode_id = d.episode_id AND r.agent_id = d.agent_id
GROUP BY ALL
ORDER BY d.round_number
