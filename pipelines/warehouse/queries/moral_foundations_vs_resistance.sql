-- Study: is there a correlation between moral foundations and resistance to evacuation? Foundation scores from the
-- pre-survey moral items (1-6, mean of each pair): care q1-q2, fairness q3-q4, loyalty q5-q6, authority q7-q8,
-- sanctity q9-q10, liberty q11-q12. Resistance per participant: share of role-play sessions that ended in refusal
-- (judge trail) and share of post-survey answers "not willing to evacuate". Pearson correlation across participants.
WITH items AS (
    SELECT participant_id, CAST(replace(question, 'q', '') AS INTEGER) AS item, answer_num
    FROM survey_answers
    WHERE section = 'moral' AND answer_num IS NOT NULL AND regexp_full_match(question, 'q[0-9]+')
),
scores AS (
    SELECT participant_id,
           CASE (item + 1) // 2 WHEN 1 THEN 'care' WHEN 2 THEN 'fairness' WHEN 3 THEN 'loyalty'
                                WHEN 4 THEN 'authority' WHEN 5 THEN 'sanctity' WHEN 6 THEN 'liberty' END AS foundation,
           avg(answer_num) AS score
    FROM items
    WHERE item BETWEEN 1 AND 12
    GROUP BY ALL
),
willing AS (
    SELECT episode_id, avg(value_num) AS willing FROM feedback WHERE name = 'willing' AND value_num IS NOT NULL GROUP BY ALL
),
resistance AS (
    SELECT e.group_id AS participant_id,
           avg(CASE WHEN e.end_reason = 'refusal' THEN 1.0 ELSE 0.0 END)
               FILTER (WHERE e.attributes->>'$.character' IS NOT NULL
                         AND coalesce(e.attributes->>'$.conversation_type', 'roleplay') <> 'non-roleplay')
               AS refusal_rate,
           avg(1.0 - w.willing) AS not_willing_rate
    FROM episodes e
    LEFT JOIN willing w USING (episode_id)
    WHERE e.source = 'study'
    GROUP BY ALL
)
SELECT s.foundation,
       count(*) AS participants,
       round(avg(s.score), 3) AS mean_score,
       count(r.refusal_rate) AS with_roleplay,
       round(nullif(corr(r.refusal_rate, s.score), 'NaN'::DOUBLE), 3) AS corr_with_refusal_rate,
       count(r.not_willing_rate) AS with_post_survey,
       round(nullif(corr(r.not_willing_rate, s.score), 'NaN'::DOUBLE), 3) AS corr_with_not_willing_rate
FROM scores s
JOIN resistance r USING (participant_id)
GROUP BY ALL
ORDER BY s.foundation
