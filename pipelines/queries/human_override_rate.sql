-- Decisions: how often humans overrode the companion's suggestion, per actor, with the mean outcome reward.
SELECT coalesce(d.actor_id, '(unknown)') AS actor,
       count(*) AS decisions_with_suggestion,
       sum(CASE WHEN NOT d.suggestion_followed THEN 1 ELSE 0 END) AS overridden,
       round(avg(CASE WHEN NOT d.suggestion_followed THEN 1.0 ELSE 0.0 END), 3) AS override_rate,
       round(avg(r.reward) FILTER (WHERE NOT d.suggestion_followed), 3) AS mean_reward_when_overridden,
       round(avg(r.reward) FILTER (WHERE d.suggestion_followed), 3) AS mean_reward_when_followed
FROM decisions d
JOIN episodes e USING (episode_id)
LEFT JOIN turn_rewards r ON r.target = 'decision' AND r.decision_id = d.decision_id
WHERE e.source = 'decision' AND d.actor_type = 'human'
  AND d.suggested_action IS NOT NULL AND d.suggestion_followed IS NOT NULL
GROUP BY ALL
ORDER BY decisions_with_suggestion DESC, actor
