# A Ruby process that hoards freed memory in glibc malloc.
#
# usage: malloc_target.rb MIB THREADS
#
# Allocates MIB MiB of strings of 1-16 KiB (their bytes live in malloc), then
# keeps one in 32 and collects the rest (GC.start frees their buffers): the
# survivors pin the pages, so malloc keeps most of it as free chunks. THREADS
# extra threads each do the same, then wait on a queue (a futex). The main
# thread reads commands on stdin: "info" prints the process' own mallinfo2()
# (called through Fiddle: on x86-64 a struct returned by value is written
# through a hidden first argument) and VmRSS as one JSON line; "more" runs
# another round; "exit" exits.
require "fiddle"
require "json"

MALLINFO2 = Fiddle::Function.new(Fiddle::Handle::DEFAULT["mallinfo2"], [Fiddle::TYPE_VOIDP], Fiddle::TYPE_VOIDP)
FIELDS = %w[arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost].freeze
$kept = []
$lock = Mutex.new

def hoard(mib, seed)
  rnd = Random.new(seed)
  blocks = []
  total = 0
  while total < mib << 20
    n = rnd.rand(1024..16_384)
    blocks << ("x" * n)
    total += n
  end
  keep = []
  blocks.each_with_index { |b, i| keep << b if (i % 32).zero? }
  $lock.synchronize { $kept.concat(keep) }
  blocks = nil
  GC.start
end

def info
  buf = Fiddle::Pointer.malloc(80, Fiddle::RUBY_FREE)
  MALLINFO2.call(buf)
  vals = buf[0, 80].unpack("Q10")
  out = FIELDS.zip(vals).to_h
  rss = File.readlines("/proc/self/status").find { |l| l.start_with?("VmRSS:") }.split[1].to_i
  out["pid"] = Process.pid
  out["rss_kb"] = rss
  $stdout.puts "ready " + JSON.generate(out)
  $stdout.flush
end

mib = Integer(ARGV[0])
nthreads = Integer(ARGV[1])
q = Queue.new
done = Queue.new
threads = (0...nthreads).map do |i|
  Thread.new do
    hoard(mib, 100 + i)
    done << i
    q.pop
  end
end
hoard(mib, 1)
nthreads.times { done.pop }
GC.start
info
while (line = $stdin.gets)
  case line.strip
  when "info" then info
  when "more" then hoard(mib, $kept.size); info
  when "exit" then break
  end
end
nthreads.times { q << :go }
threads.each(&:join)
