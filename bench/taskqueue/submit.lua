-- submit.lua: POST /tasks/submissions with the JSON body given after `--` (one pre-built
-- request: every submission is a new task, since no Idempotency-Key is sent).
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
require("common")

local req

function init(args)
   req = wrk.format("POST", "/tasks/submissions", {["Content-Type"] = "application/json"}, args[1])
end

function request()
   return req
end
