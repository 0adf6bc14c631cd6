-- Decisions: how often humans overrode the companion's suggestion (the source's own wasFollowed, else the
-- actions compared case-insensitively), per actor, and with what outcome: of the overridden and of the followed
-- decisions, how many got an outcome reward and its mean, and the share the source judged good (wasGoodDecision).
WITH outcome AS (
    SELECT decision_id, avg(reward) AS reward
    FROM turn_rewards
    WHERE target = 'decision' AND decision_id IS NOT NULL
    GROUP BY decision_id
), verdict AS (
    SELECT decision_id, avg(value_num) AS judged_good
    FROM feedback
    WHERE target = 'decision' AND name = 'was_good_decision'
    GROUP BY decision_id
)
SELECT coalesce(d.actor_id, '(unknown)') AS actor,
       count(*) AS decisions_with_suggestion,
       count(*) FILTER (WHERE NOT d.suggestion_followed) AS overridden,
       round(avg(CASE WHEN NOT d.suggestion_followed THEN 1.0 ELSE 0.0 END), 3) AS override_rate,
       count(o.reward) FILTER (WHERE NOT d.suggestion_followed) AS overridden_rewarded,
       round(avg(o.reward) FILTER (WHERE NOT d.suggestion_followed), 3) AS mean_reward_when_overridden,
       count(o.reward) FILTER (WHERE d.suggestion_followed) AS followed_rewarded,
       round(avg(o.reward) FILTER (WHERE d.suggestion_followed), 3) AS mean_reward_when_followed,
       round(avg(v.judged_good) FILTER (WHERE NOT d.suggestion_followed), 3) AS judged_good_when_overridden,
       round(avg(v.judged_good) FILTER (WHERE d.suggestion_followed), 3) AS judged_good_when_followed
FROM decisions d
JOIN episodes e USING (episode_id)
LEFT JOIN outcome o USING (decision_id)
LEFT JOIN verdict v USING (decision_id)
WHERE e.source = 'decision' AND d.actor_type = 'human' AND d.suggestion_followed IS NOT NULL
GROUP BY ALL
ORDER BY decisions_with_suggestion DESC, actor
