-- Study: session outcomes by the participant's background (pre-survey): age band, gender, education, ideology (1 very
-- liberal ... 7 very conservative). Role-play sessions: agreement / refusal rate (end reason from the judge trail);
-- every session: the post-survey "willing to evacuate" rate (yes = 1, no = 0).
WITH background AS (
    SELECT participant_id,
           max(answer_num) FILTER (WHERE question = 'age') AS age,
           max(answer_text) FILTER (WHERE question = 'gender') AS gender,
           max(answer_text) FILTER (WHERE question = 'education') AS education,
           max(answer_text) FILTER (WHERE question = 'ideology') AS ideology
    FROM survey_answers
    WHERE section = 'background'
    GROUP BY ALL
),
dimensions AS (
    SELECT participant_id, 'age' AS dimension,
           CASE WHEN age IS NULL THEN NULL WHEN age < 25 THEN '18-24' WHEN age < 35 THEN '25-34'
                WHEN age < 45 THEN '35-44' WHEN age < 55 THEN '45-54' WHEN age < 65 THEN '55-64' ELSE '65+' END AS value
    FROM background
    UNION ALL SELECT participant_id, 'gender', gender FROM background
    UNION ALL SELECT participant_id, 'education', education FROM background
    UNION ALL SELECT participant_id, 'ideology', ideology FROM background
),
willing AS (
    SELECT episode_id, avg(value_num) AS willing FROM feedback WHERE name = 'willing' AND value_num IS NOT NULL GROUP BY ALL
),
sessions AS (
    SELECT e.episode_id, e.group_id AS participant_id, e.end_reason, w.willing,
           e.attributes->>'$.character' IS NOT NULL
               AND coalesce(e.attributes->>'$.conversation_type', 'roleplay') <> 'non-roleplay' AS roleplay
    FROM episodes e
    LEFT JOIN willing w USING (episode_id)
    WHERE e.source = 'study'
)
SELECT d.dimension,
       coalesce(d.value, '(no answer)') AS value,
       count(DISTINCT s.participant_id) AS participants,
       count(*) AS sessions,
       count(*) FILTER (WHERE s.roleplay) AS roleplay_sessions,
       round(avg(CASE WHEN s.end_reason = 'agreement' THEN 1.0 ELSE 0.0 END) FILTER (WHERE s.roleplay), 3) AS agreement_rate,
       round(avg(CASE WHEN s.end_reason = 'refusal' THEN 1.0 ELSE 0.0 END) FILTER (WHERE s.roleplay), 3) AS refusal_rate,
       count(s.willing) AS post_surveys,
       round(avg(s.willing), 3) AS willing_rate
FROM dimensions d
JOIN sessions s USING (participant_id)
GROUP BY ALL
ORDER BY d.dimension, value
