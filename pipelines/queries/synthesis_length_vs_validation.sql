-- Scenario: length of the moderator's synthesis / checkpoint message (words) vs how often the user validated it.
SELECT CASE WHEN q.word_count < 20 THEN 'a: <20 words'
            WHEN q.word_count < 40 THEN 'b: 20-39 words'
            WHEN q.word_count < 80 THEN 'c: 40-79 words'
            ELSE 'd: 80+ words' END AS length_bucket,
       count(*) AS moderator_messages,
       round(avg(q.word_count), 1) AS mean_words,
       round(avg(f.value_num), 3) AS validation_rate
FROM quality_signals q
JOIN feedback f ON f.turn_id = q.turn_id AND f.name = 'user_validated'
WHERE q.episode_id LIKE 'scenario:%' AND q.role = 'assistant'
GROUP BY ALL
ORDER BY length_bucket
