SELECT "ZAXLEVITR" AS depth_m, count("TEMP") AS ocean_cells,
       round(avg("TEMP"), 3) AS mean_temp_c, round(avg("SALT"), 3) AS mean_salinity
FROM levitus GROUP BY "ZAXLEVITR" ORDER BY "ZAXLEVITR"
