# ekya plot: results.dat -> accuracy_vs_gpus.{svg,png}, streams_above_target.{svg,png}
set logscale x 2
set xrange [0.4:10]
set xlabel 'GPUs (log scale)'
set xtics ('0.5' 0.5, '1' 1, '2' 2, '4' 4, '8' 8) nomirror
unset mxtics
set ytics nomirror
set border 3 back
set grid xtics ytics back lc rgb '#b8b8b8' lw 1 dt 2
set key outside below center horizontal Left reverse maxrows 3 samplen 3 spacing 1.1 width 1 font ',11'
set tmargin 1.5
set rmargin 3
set clip two
set autoscale yfix
set offsets 0, 0, graph 0.08, graph 0.08
set format y '%.2f'
set ylabel 'mean inference accuracy'
set terminal svg size 800,600 noenhanced font 'sans,13' background '#ffffff'
set output 'accuracy_vs_gpus.svg'
plot 'results.dat' using 1:2 with linespoints lc rgb '#0072B2' pt 7 ps 2.20 lw 5.00 dt 1 title 'thief', \
     'results.dat' using 1:4 with linespoints lc rgb '#D55E00' pt 5 ps 1.90 lw 4.06 dt 1 title 'fixedres', \
     'results.dat' using 1:6 with linespoints lc rgb '#009E73' pt 9 ps 1.60 lw 3.12 dt 1 title 'noretrain', \
     'results.dat' using 1:8 with linespoints lc rgb '#000000' pt 13 ps 1.30 lw 2.19 dt 1 title 'uniform:w128-last-f1-b64:5:0.5', \
     'results.dat' using 1:10 with linespoints lc rgb '#E69F00' pt 11 ps 1.00 lw 1.25 dt 1 title 'uniform:w128-last-f0.5-b16:5:0.5'
unset output
set terminal pngcairo size 800,600 noenhanced font 'sans,13' background '#ffffff'
set output 'accuracy_vs_gpus.png'
replot
unset output

set offsets 0, 0, 0, 0
set autoscale y
set yrange [-0.04 * 10 - 0.2:10 * 1.04 + 0.2]
set format y '%g'
set ytics 1
set ylabel 'streams with accuracy >= 0.85 (of 10)'
set terminal svg size 800,600 noenhanced font 'sans,13' background '#ffffff'
set output 'streams_above_target.svg'
plot 'results.dat' using 1:3 with linespoints lc rgb '#0072B2' pt 7 ps 2.20 lw 5.00 dt 1 title 'thief', \
     'results.dat' using 1:5 with linespoints lc rgb '#D55E00' pt 5 ps 1.90 lw 4.06 dt 1 title 'fixedres', \
     'results.dat' using 1:7 with linespoints lc rgb '#009E73' pt 9 ps 1.60 lw 3.12 dt 1 title 'noretrain', \
     'results.dat' using 1:9 with linespoints lc rgb '#000000' pt 13 ps 1.30 lw 2.19 dt 1 title 'uniform:w128-last-f1-b64:5:0.5', \
     'results.dat' using 1:11 with linespoints lc rgb '#E69F00' pt 11 ps 1.00 lw 1.25 dt 1 title 'uniform:w128-last-f0.5-b16:5:0.5'
unset output
set terminal pngcairo size 800,600 noenhanced font 'sans,13' background '#ffffff'
set output 'streams_above_target.png'
replot
unset output
