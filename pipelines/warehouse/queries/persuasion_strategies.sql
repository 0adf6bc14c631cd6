-- Study: persuasion strategies of the non-role-play sessions (rational-informational, emotional-relational,
-- social-normative) compared by their outcome: the participant's post-survey answer "willing to evacuate" (yes = 1,
-- no = 0; these sessions have no judge). IQL policies of role-play sessions are compared in agreement_by_policy.
WITH willing AS (
    SELECT episode_id, avg(value_num) AS willing
    FROM feedback
    WHERE name = 'willing' AND value_num IS NOT NULL
    GROUP BY ALL
)
SELECT coalesce(e.attributes->>'$.persuasion_strategy', '(none)') AS persuasion_strategy,
       count(*) AS sessions,
       count(w.willing) AS answered,
       count(*) FILTER (WHERE w.willing = 1.0) AS willing_yes,
       count(*) FILTER (WHERE w.willing = 0.0) AS willing_no,
       round(avg(w.willing), 3) AS willing_rate
FROM episodes e
LEFT JOIN willing w USING (episode_id)
WHERE e.source = 'study'
  AND (e.attributes->>'$.conversation_type' = 'non-roleplay'
       OR (e.attributes->>'$.character' IS NULL AND e.attributes->>'$.persuasion_strategy' IS NOT NULL))
GROUP BY ALL
ORDER BY willing_rate DESC NULLS LAST, persuasion_strategy
