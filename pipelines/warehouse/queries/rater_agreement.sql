-- Inter-rater agreement: Krippendorff's alpha per score name and level of measurement, with the items rated by 2 or more raters and their ratings; "not computable" names say why.
SELECT name, level, round(alpha, 3) AS alpha, n_items, n_ratings, max_raters, status, reason
FROM rater_agreement
ORDER BY status, name, level
