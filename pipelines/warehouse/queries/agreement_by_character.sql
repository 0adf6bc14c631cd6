-- Study: role-play sessions by character: agreement / refusal / max-turns rates (end reason derived from the judge trail),
-- mean return, and the post-survey "willing to evacuate" rate. Non-role-play sessions have no character and no judge:
-- they are compared in persuasion_strategies.
WITH willing AS (
    SELECT episode_id, avg(value_num) AS willing
    FROM feedback
    WHERE name = 'willing' AND value_num IS NOT NULL
    GROUP BY ALL
)
SELECT e.attributes->>'$.character' AS character,
       count(*) AS sessions,
       round(avg(CASE WHEN e.end_reason = 'agreement' THEN 1.0 ELSE 0.0 END), 3) AS agreement_rate,
       round(avg(CASE WHEN e.end_reason = 'refusal' THEN 1.0 ELSE 0.0 END), 3) AS refusal_rate,
       round(avg(CASE WHEN e.end_reason = 'max_turns' THEN 1.0 ELSE 0.0 END), 3) AS max_turns_rate,
       round(avg(o."return"), 3) AS mean_return,
       count(w.willing) AS post_surveys,
       round(avg(w.willing), 3) AS willing_rate
FROM episodes e
LEFT JOIN episode_outcomes o USING (episode_id)
LEFT JOIN willing w USING (episode_id)
WHERE e.source = 'study'
  AND e.attributes->>'$.character' IS NOT NULL
  AND coalesce(e.attributes->>'$.conversation_type', 'roleplay') <> 'non-roleplay'
GROUP BY ALL
ORDER BY sessions DESC, character
