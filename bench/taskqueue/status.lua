-- status.lua: GET /tasks/submissions/{id} over ids read from the file named after `--`
-- (a second argument replaces the path before the id: "/tasks/" reads results instead).
-- Ids are drawn at random per request so the server cannot serve one hot key.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
require("common")

local ids = {}

function init(args)
   local prefix = args[2] or "/tasks/submissions/"
   for line in io.lines(args[1]) do
      if #line > 0 then table.insert(ids, prefix .. line) end
   end
   math.randomseed(os.time() + tonumber(tostring(ids):match("0x(%x+)") or "0", 16) % 1000)
end

function request()
   return wrk.format("GET", ids[math.random(#ids)])
end
