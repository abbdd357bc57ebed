-- AliSQL's hot-row statement (the 004 write-up): every event increments one row, with the
-- hints that let the server group concurrent updates of that row into one commit.
-- Run: sysbench --db-driver=mysql --mysql-db=hot ... hot_row.lua run
-- (the table: CREATE TABLE t1 (id INT PRIMARY KEY AUTO_INCREMENT, data INT), one row id=1).
-- The MySQL client strips /*+ */ comments unless given --comments; sysbench sends the text
-- as is.

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  con:query("UPDATE /*+ commit_on_success rollback_on_fail target_affect_row(1) */ t1 SET data=data+1 WHERE id=1")
end

function thread_done()
  con:disconnect()
end
