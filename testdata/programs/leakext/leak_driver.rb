# leak_driver: the Ruby side of the rbleak extension (rbleak.c).
#
# usage: ruby leak_driver.rb DIR   (DIR holds rbleak.so)
# Commands on stdin, one per line: "leak MIB" calls RbLeak.keep_record
# until MIB MiB are kept, and RbLeak.scratch as often (the healthy path);
# "exit" ends. After each command it prints
# "ready leaked=BYTES healthy_live=BYTES", as the extension counts them.
$LOAD_PATH.unshift(ARGV.shift)
require "rbleak"
$stdout.sync = true

$stdin.each_line do |line|
  words = line.split
  case words[0]
  when "leak"
    want = Integer(words[1]) << 20
    done = 0
    while done < want
      done += RbLeak.keep_record
      RbLeak.scratch
    end
  when "exit"
    break
  end
  leaked, healthy = RbLeak.counts
  puts "ready leaked=#{leaked} healthy_live=#{healthy}"
end
