# A Prometheus-style metrics server in plain Ruby (socket library only), built
# the way a separate exporter process is: every GET /metrics renders a large
# exposition from scratch, creating hundreds of thousands of short-lived
# objects (label hashes, formatted strings, arrays). Nothing survives the
# request, so the heap is full of garbage that the VM only collects when its
# free slots run out; with no memory pressure it stays that big.
#
#   ruby metrics_server.rb [--port N] [--gc-after-request] [--families N]
#
# --gc-after-request (or GC_AFTER_REQUEST=1) runs a major GC (GC.start) after
# each /metrics response is written, trading latency for memory.
#
# On start it prints "ready PORT PID" on stdout. GET /metrics also exposes the
# VM's own GC.stat as ruby_gc_stat_<key> gauges and the process' resident
# memory and start time (the names GitLab's exporters use), GET /healthz
# answers "ok". It listens on 127.0.0.1 only.
require 'etc'
require 'socket'

port = 0
gc_after = ENV['GC_AFTER_REQUEST'] == '1'
families = 23
args = ARGV.dup
until args.empty?
  case (a = args.shift)
  when '--port' then port = Integer(args.shift)
  when '--gc-after-request' then gc_after = true
  when '--families' then families = Integer(args.shift)
  else
    warn "metrics_server.rb: unknown argument #{a}"
    exit 2
  end
end

# The metric registry: every series' name and label set, created once and
# kept for the life of the process (an exporter's metric definitions; with
# the VM's own loaded code they form the long-lived, old-generation set).
def registry(families)
  series = []
  families.times do |f|
    name = "sidekiq_jobs_family_#{f}_seconds"
    250.times do |s|
      labels = {
        'queue' => "github_importer:github_import_stage_import_repository_#{s % 17}_#{f}",
        'worker' => "Gitlab::GithubImport::Stage::ImportRepositoryWorker#{s}::Perform",
        'feature_category' => "source_code_management_category_#{s % 13}",
        'urgency' => %w[high low throttled][s % 3],
        'le' => format('%.3f', 0.005 * (1 << (s % 10)))
      }
      series << [name, labels.freeze]
    end
  end
  series.freeze
end

# One exposition, built the way a client library does: each family's lines
# are rendered (escaped label values, a formatted float) and joined into one
# text block per family, and the blocks are joined into the response, about
# 68 kB per family (250 lines of about 265 bytes: a GitLab importer's
# queue and worker names). The lines die young; the family blocks live for the
# whole request, outlive a few minor GCs and are promoted to the old
# generation, where only a major GC frees them (and the malloc'd text they
# hold). Everything but the registry is garbage once the response is sent.
def render(series, requests)
  out = []
  GC.stat.each do |k, v|
    out << "# TYPE ruby_gc_stat_#{k} gauge"
    out << "ruby_gc_stat_#{k} #{v}"
  end
  out << '# TYPE ruby_process_resident_memory_bytes gauge'
  out << "ruby_process_resident_memory_bytes #{File.read('/proc/self/statm').split[1].to_i * PAGE_SIZE}"
  out << '# TYPE ruby_process_start_time_seconds gauge'
  out << "ruby_process_start_time_seconds #{STARTED}"
  out << '# TYPE metrics_server_requests_total counter'
  out << "metrics_server_requests_total #{requests}"
  series.chunk_while { |a, b| a[0] == b[0] }.each do |family|
    name = family[0][0]
    lines = ["# HELP #{name} Time spent in jobs of one family.", "# TYPE #{name} histogram"]
    family.each do |_, labels|
      text = labels.map { |k, v| %(#{k}="#{v.gsub('"', '\\"')}") }.join(',')
      lines << "#{name}_bucket{#{text}} #{format('%.6f', rand * 1000)}"
    end
    out << lines.join("\n")
  end
  out << ''
  out.join("\n")
end

PAGE_SIZE = Etc.sysconf(Etc::SC_PAGESIZE)
STARTED = Process.clock_gettime(Process::CLOCK_REALTIME)
series = registry(families)
server = TCPServer.new('127.0.0.1', port)
$stdout.puts "ready #{server.addr[1]} #{Process.pid}"
$stdout.flush
trap('TERM') { exit 0 }

requests = 0
lock = Mutex.new
# A thread per connection (as WEBrick does); the VM lock still serves one
# request at a time.
serve = lambda do |client|
  begin
    loop do
      line = client.gets
      break if line.nil?
      method, path, = line.split(' ')
      keep_alive = line.include?('HTTP/1.1')
      while (h = client.gets) && h != "\r\n"
        keep_alive = false if h.downcase.start_with?('connection:') && h.downcase.include?('close')
      end
      path = path.to_s.split('?').first
      status = '200 OK'
      if method != 'GET'
        status = '405 Method Not Allowed'
        body = "only GET\n"
      elsif path == '/metrics'
        body = lock.synchronize do
          requests += 1
          render(series, requests)
        end
      elsif path == '/healthz'
        body = "ok\n"
      else
        status = '404 Not Found'
        body = "not found\n"
      end
      client.write("HTTP/1.1 #{status}\r\nContent-Type: text/plain; version=0.0.4\r\n" \
                   "Content-Length: #{body.bytesize}\r\n" \
                   "Connection: #{keep_alive ? 'keep-alive' : 'close'}\r\n\r\n")
      client.write(body)
      body = nil
      GC.start if gc_after && path == '/metrics'
      break unless keep_alive
    end
  rescue Errno::ECONNRESET, Errno::EPIPE
    # the client went away: serve the next one
  ensure
    client.close
  end
end

loop do
  Thread.new(server.accept, &serve)
end
