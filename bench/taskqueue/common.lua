-- common.lua: status-code counting and a one-line JSON summary shared by the wrk scripts.
-- Each wrk thread counts the statuses it saw; done() (main Lua state) merges them through
-- thread:get, so 202s, 503s and other codes are reported separately, not as one "non-2xx".
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

counts = {}

function response(status, headers, body)
   counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
   local merged = {}
   for _, t in ipairs(threads) do
      local c = t:get("counts")
      for code, n in pairs(c) do
         merged[code] = (merged[code] or 0) + n
      end
   end
   local parts = {}
   for code, n in pairs(merged) do
      table.insert(parts, string.format('"%d":%d', code, n))
   end
   local e = summary.errors
   io.write(string.format(
      'WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
      '"max_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"codes":{%s}}\n',
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout,
      table.concat(parts, ",")))
end
