# SPDX-License-Identifier: Apache-2.0
# Turns `kilnd --print-config-example` into the KEYS part of kilnd.conf(5).
# Usage: awk -f kiln-conf-scd.awk kilnd.conf.5.scd.in EXAMPLE > kilnd.conf.5.scd
# The template's @KEYS@ line is replaced by one entry per key: its name, default and help.

function esc(s) {
	gsub(/\\/, "\\\\", s)
	gsub(/\*/, "\\*", s)
	gsub(/_/, "\\_", s)
	return s
}

FNR == NR {
	tpl[++ntpl] = $0
	next
}

# the example's own header, up to its first blank line, is not repeated
!body {
	if ($0 == "")
		body = 1
	next
}

/^\[[a-z_]+\]$/ {
	keys = keys "## " $0 "\n\n"
	help = ""
	next
}

/^#[a-z_]+ =( |$)/ {
	name = $0
	sub(/^#/, "", name)
	sub(/ =( .*)?$/, "", name)
	def = $0
	sub(/^#[a-z_]+ =( )?/, "", def)
	if (def == "")
		def = "(empty)"
	if (!insection && keys !~ /## /) {
		keys = keys "## Top level\n\n"
		insection = 1
	}
	keys = keys "*" esc(name) "* = " esc(def) "\n" help "\n\n"
	help = ""
	next
}

# Help lines are joined into one (scdoc would read a line starting with "-" as a list);
# the line giving the type and bounds keeps a line of its own.
/^# / {
	line = $0
	sub(/^# /, "", line)
	if (help == "")
		help = "\t" esc(line)
	else if (line ~ /^(Integer|Number|Duration|One of|yes or no)/)
		help = help "\n\n\t" esc(line)
	else
		help = help " " esc(line)
	next
}

END {
	for (i = 1; i <= ntpl; i++) {
		if (tpl[i] == "@KEYS@")
			printf "%s", keys
		else
			print tpl[i]
	}
}
