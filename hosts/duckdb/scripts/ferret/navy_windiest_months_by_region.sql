WITH monthly AS (
  SELECT 'North Atlantic' AS region, "TIME" AS t, avg(sqrt("UWND" * "UWND" + "VWND" * "VWND")) AS speed
    FROM winds WHERE "FNOCY" BETWEEN 40 AND 65 AND "FNOCX" BETWEEN 300 AND 350 GROUP BY "TIME"
  UNION ALL
  SELECT 'Southern Ocean', "TIME", avg(sqrt("UWND" * "UWND" + "VWND" * "VWND"))
    FROM winds WHERE "FNOCY" BETWEEN -60 AND -45 GROUP BY "TIME"
  UNION ALL
  SELECT 'Equatorial Pacific', "TIME", avg(sqrt("UWND" * "UWND" + "VWND" * "VWND"))
    FROM winds WHERE "FNOCY" BETWEEN -5 AND 5 AND "FNOCX" BETWEEN 160 AND 270 GROUP BY "TIME"
), ranked AS (
  SELECT region, t, speed, row_number() OVER (PARTITION BY region ORDER BY speed DESC) AS rank FROM monthly
)
SELECT region, rank, strftime(t, '%Y-%m') AS month, round(speed, 2) AS mean_wind_speed_m_s
FROM ranked WHERE rank <= 3 ORDER BY region, rank
