-- Scenario: how often the user followed the moderator's proposal, by the moderator's significance call. "Followed"
-- compares meanings (proceed = proceed_without_reround, re-round = proceed_with_reround, accept follows any proposal);
-- a decision whose wording is outside that vocabulary is counted as unknown, never as an override.
SELECT coalesce(attributes->>'$.significance_evaluation', '(none)') AS significance_call,
       count(*) AS decisions,
       count(*) FILTER (WHERE suggestion_followed) AS followed,
       count(*) FILTER (WHERE NOT suggestion_followed) AS overridden,
       count(*) FILTER (WHERE suggestion_followed IS NULL) AS unknown,
       round(avg(CASE WHEN suggestion_followed THEN 1.0 WHEN NOT suggestion_followed THEN 0.0 END), 3) AS follow_rate
FROM decisions
WHERE episode_id LIKE 'scenario:%' AND suggested_action IS NOT NULL
GROUP BY ALL
ORDER BY decisions DESC, significance_call
