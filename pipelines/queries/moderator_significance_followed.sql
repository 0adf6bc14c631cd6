-- Scenario: how often the user followed the moderator's proposal, by the moderator's significance call.
SELECT coalesce(d.attributes->>'$.significance_evaluation', '(none)') AS significance_call,
       count(*) AS decisions,
       sum(CASE WHEN d.suggestion_followed THEN 1 ELSE 0 END) AS followed,
       round(avg(CASE WHEN d.suggestion_followed THEN 1.0 ELSE 0.0 END), 3) AS follow_rate
FROM decisions d
WHERE d.episode_id LIKE 'scenario:%' AND d.suggestion_followed IS NOT NULL
GROUP BY ALL
ORDER BY decisions DESC, significance_call
